"""When each request of an open-loop run is due: arrival profiles at a request rate.

The definitions are vllm bench serve's (`--request-rate R --burstiness B`, vLLM 0.32's
`benchmarks/serve.get_request`), so a schedule here is the schedule vllm bench would send:

- the gap before each request (the first one included) is drawn from a gamma distribution with
  shape B and scale 1 / (R * B): mean 1 / R; B = 1 is a Poisson process (exponential gaps),
  B < 1 burstier, B > 1 more even;
- `constant` (B = infinity): every gap is 1 / R;
- the gaps are summed, then scaled so that the last request is due at exactly N / R (vllm's
  normalisation: the sum of random gaps misses N / R by 1-2%, which would move throughput
  from seed to seed);
- R = infinity: every request is due at 0 (all at once);
- seeded like vllm bench (`--seed`, default 0: numpy's legacy generator seeded with it), so the
  same seed gives the same schedule.
"""

from __future__ import annotations

import math

import numpy as np

from playground.specs.rates import Kind, Rate

__all__ = ["Kind", "Rate", "parse_rates", "schedule"]

def parse_rates(text: str, kind: Kind = "poisson", burstiness: float = 1.0) -> list[Rate]:
    """`1,5,20,inf` -> one Rate each (ValueError naming the bad item)."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        try:
            per_s = float(item)
        except ValueError:
            raise ValueError(f"{item!r} is not a rate: give requests a second, e.g. "
                             "1,5,20,inf") from None
        if not per_s > 0:
            raise ValueError(f"{item!r}: a rate must be above 0 (inf: all at once)")
        out.append(Rate(kind=kind, per_s=per_s, burstiness=burstiness))
    return out


def schedule(rate: Rate, n: int, seed: int = 0) -> list[float]:
    """Seconds from the run's start at which each of `n` requests is due."""
    if n <= 0:
        return []
    if math.isinf(rate.per_s):
        return [0.0] * n
    shape = rate.shape()
    if math.isinf(shape):
        gaps = [1.0 / rate.per_s] * n
    else:
        rng = np.random.RandomState(seed)  # numpy's legacy stream, as np.random.seed(seed)
        gaps = [float(rng.gamma(shape=shape, scale=1.0 / (rate.per_s * shape)))
                for _ in range(n)]
    due = list(np.cumsum(gaps))
    scale = (n / rate.per_s) / due[-1]
    return [float(t * scale) for t in due]
