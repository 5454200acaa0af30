"""The shared page's login (ui/login.py): constant-time checks, wrong logins slowed."""

from __future__ import annotations

import pytest


@pytest.mark.reliability(case="repeated wrong logins on an app shared with --auth", where="each "
                         "check waits its turn, longer after 3 wrong ones a minute (0.25 s "
                         "doubling to 8 s); the right password still logs in", order=71)
def test_wrong_logins_are_slowed_and_a_right_one_still_passes(observed) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import inspect

    from playground.ui.login import FREE, MAX_S, SlowLogin

    waits: list[float] = []
    now = [0.0]

    async def sleep(s: float) -> None:  # a scripted clock: the waits asked for, no real time
        waits.append(s)
        now[0] += s

    login = SlowLogin([("demo", "s3cret")], sleep=sleep, clock=lambda: now[0])
    assert inspect.iscoroutinefunction(login.check)  # what Gradio checks before awaiting

    async def main() -> list[bool]:
        tries = [login.check("demo", f"guess{i}") for i in range(12)]
        return [*await asyncio.gather(*tries), await login.check("demo", "s3cret"),
                await login.check("nobody", "")]

    results = asyncio.run(main())
    assert results[:12] == [False] * 12 and results[12] is True and results[13] is False
    assert len(waits) == 12 - FREE + 1 + 1  # every check after the free ones waited
    assert waits == sorted(waits[:-2]) + waits[-2:] and max(waits) == MAX_S  # doubling, capped
    observed(f"12 wrong logins at once: waits asked (s) {waits[:-2]}; then the right password: "
             f"{results[12]}")
    now[0] += 120  # a minute later the slate is clean
    assert login.delay_s() == 0.0


def test_one_address_guessing_does_not_slow_the_operator_elsewhere() -> None:
    """10 concurrent wrong logins from one address made the right password from another
    address wait 31.4 s: the throttle is per address now, and the middleware says whose."""
    import asyncio

    from playground.ui.login import CLIENT, MAX_S, ClientAddress, SlowLogin

    waits: dict[str, list[float]] = {}
    now = [0.0]

    async def sleep(s: float) -> None:
        waits.setdefault(CLIENT.get(), []).append(s)
        now[0] += s

    login = SlowLogin([("demo", "s3cret")], sleep=sleep, clock=lambda: now[0])

    async def as_(who: str, password: str) -> bool:
        CLIENT.set(who)  # (each task has its own copy of the context)
        return await login.check("demo", password)

    async def main() -> tuple[list[bool], bool]:
        guesses = [asyncio.create_task(as_("10.6.6.6", f"guess{i}")) for i in range(10)]
        await asyncio.sleep(0)
        operator = await asyncio.create_task(as_("10.0.0.1", "s3cret"))
        return list(await asyncio.gather(*guesses)), operator

    guessed, operator = asyncio.run(main())
    assert operator is True and not any(guessed)
    assert "10.0.0.1" not in waits  # the operator waited for nothing
    assert max(waits["10.6.6.6"]) == MAX_S  # the guesser is slowed as before

    seen: list[str] = []

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        seen.append(CLIENT.get())

    mw = ClientAddress(app, lambda r: r.client.host if r.client else "")
    for path in ("/login", "/config"):
        asyncio.run(mw({"type": "http", "path": path, "headers": [], "method": "POST",
                        "client": ("10.2.3.4", 5), "query_string": b""}, None, None))
    assert seen == ["10.2.3.4", ""]  # set around the login only
