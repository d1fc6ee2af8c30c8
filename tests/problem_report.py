"""The verdict of a check script that lists every problem it finds rather than stopping at the
first: one "FAIL: ..." line per problem, or one "ok: ..." line, and the exit status for ctest.

    return problem_report.report(problems, "every metric exported")
"""


def report(problems: list[str], ok: str) -> int:
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"ok: {ok}")
    return 1 if problems else 0
