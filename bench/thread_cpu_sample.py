#!/usr/bin/python3
"""Where the cores go: once a second, the CPU time of each process's threads grouped by thread name
(digits dropped, so "grpcpp_sync_ser" and "tandem-cpu" workers add up), in cores, plus the whole
machine's busy cores and its runnable threads beyond the cores (from /proc/stat and /proc/loadavg).

  bench/thread_cpu_sample.py SECONDS LABEL NAME=PID [NAME=PID ...]

One line a second: LABEL t=... machine busy=B/N cores run=R  NAME:group=cores,...  (groups above
0.05 cores, largest first). Linux only; reads /proc/PID/task/*/stat (utime + stime, field 14-15).
"""
import os, re, sys, time

seconds, label = float(sys.argv[1]), sys.argv[2]
procs = [arg.split('=', 1) for arg in sys.argv[3:]]
tick = os.sysconf('SC_CLK_TCK')
ncpu = os.cpu_count()


def machine():
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields), idle


def running():
    with open('/proc/stat') as f:
        for line in f:
            if line.startswith('procs_running'):
                return int(line.split()[1])
    return 0


def threads(pid):
    out = {}
    try:
        tids = os.listdir('/proc/%s/task' % pid)
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open('/proc/%s/task/%s/stat' % (pid, tid)) as f:
                s = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        name = s[s.index('(') + 1:s.rindex(')')]
        rest = s[s.rindex(')') + 2:].split()
        out[tid] = (re.sub(r'[0-9]+', '', name).strip('-_ ') or name, int(rest[11]) + int(rest[12]))
    return out


prev_m = machine()
prev = {name: threads(pid) for name, pid in procs}
t0 = last = time.time()
while time.time() - t0 < seconds:
    time.sleep(1.0)
    now = time.time()
    dt = now - last
    last = now
    m = machine()
    busy = ((m[0] - prev_m[0]) - (m[1] - prev_m[1])) / max(1, m[0] - prev_m[0]) * ncpu
    prev_m = m
    parts = []
    for name, pid in procs:
        cur = threads(pid)
        groups = {}
        for tid, (group, ticks) in cur.items():
            before = prev[name][tid][1] if tid in prev[name] else 0  # new thread: all its time
            groups[group] = groups.get(group, 0) + (ticks - before) / tick / dt
        prev[name] = cur
        total = sum(groups.values())
        top = sorted(((v, g) for g, v in groups.items() if v >= 0.05), reverse=True)
        parts.append('%s=%.2f[%s]' % (name, total, ','.join('%s:%.2f' % (g, v) for v, g in top)))
    print('%s t=%4.1f machine busy=%.1f/%d run=%d %s' % (label, now - t0, busy, ncpu, running(),
                                                        ' '.join(parts)), flush=True)
