#!/usr/bin/python3
"""Prints tandem-server scheduler metrics once a second: bench/metrics_sample.py URL SECONDS LABEL
(busy workers and busy seconds per processor, queue depths, queries in flight, queries taken, and
where the workers' time went: engine, answer, lock (waiting for the scheduler: its lock or a round
serving the request), scheduling, idle seconds per second)."""
import re, sys, time, urllib.request
url, seconds, label = sys.argv[1], float(sys.argv[2]), sys.argv[3]
want = re.compile(r'^(tandem_processor_busy_workers|tandem_scheduler_queue_depth|tandem_queries_in_flight|'
                  r'tandem_processor_busy_seconds_total|tandem_scheduler_decisions_total|'
                  r'tandem_processor_worker_seconds_total)(\{[^}]*\})? ([0-9.e+-]+)')
def scrape():
    out = {}
    for line in urllib.request.urlopen(url).read().decode().splitlines():
        m = want.match(line)
        if m:
            out[m.group(1) + (m.group(2) or '')] = float(m.group(3))
    return out
BUSY = 'tandem_processor_busy_workers{processor="%s"}'
BUSY_S = 'tandem_processor_busy_seconds_total{processor="%s"}'
DEPTH = 'tandem_scheduler_queue_depth{queue="%s"}'
ACTIVITY = 'tandem_processor_worker_seconds_total{activity="%s",processor="%s"}'
def activities(cur, prev, p):
    return '/'.join('%.2f' % (cur.get(ACTIVITY % (a, p), 0) - prev.get(ACTIVITY % (a, p), 0))
                    for a in ('engine', 'answer', 'lock', 'scheduling', 'idle'))
prev = scrape()
t0 = time.time()
while time.time() - t0 < seconds:
    time.sleep(1.0)
    cur = scrape()
    taken = {p: sum(v - prev.get(k, 0) for k, v in cur.items()
                    if k.startswith('tandem_scheduler_decisions_total') and ('processor="%s"' % p) in k)
             for p in ('cpu', 'gpu')}
    print('%s t=%4.1f busy cpu=%.0f gpu=%.0f busy_s/s cpu=%.2f gpu=%.2f q cpu=%.0f gpu=%.0f shared=%.0f inflight=%.0f taken/s cpu=%.0f gpu=%.0f e/a/l/s/i cpu=%s gpu=%s' % (
        label, time.time() - t0, cur.get(BUSY % 'cpu', 0), cur.get(BUSY % 'gpu', 0),
        cur.get(BUSY_S % 'cpu', 0) - prev.get(BUSY_S % 'cpu', 0),
        cur.get(BUSY_S % 'gpu', 0) - prev.get(BUSY_S % 'gpu', 0),
        cur.get(DEPTH % 'cpu', 0), cur.get(DEPTH % 'gpu', 0), cur.get(DEPTH % 'shared', 0),
        cur.get('tandem_queries_in_flight', 0), taken['cpu'], taken['gpu'],
        activities(cur, prev, 'cpu'), activities(cur, prev, 'gpu')), flush=True)
    prev = cur
