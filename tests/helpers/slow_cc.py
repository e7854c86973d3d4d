"""Preloaded into the dask workers of the dedup kill test (``DASK_DISTRIBUTED__WORKER__PRELOAD``):
every round of connected components after the first pass sleeps first, so that the test
can kill the whole run while one is under way."""

import time

from datamask.stages.corpus import dedup_cc

SLEEP = 60.0
_star_round = dedup_cc.star_round


def _slow_star_round(item, ctx):
    time.sleep(SLEEP)
    return _star_round(item, ctx)


dedup_cc.star_round = _slow_star_round
