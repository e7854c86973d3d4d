"""``datamask search``: choose a recipe with proxy models and a regressor (docs/search.md).

One module per concern: the space of recipes (:mod:`.space`), the config (:mod:`.config`), a
token budget's shares and its check against ``prune`` (:mod:`.budget`),
what every trial shares (:mod:`.prepare`), one trial (:mod:`.trials`), the noise across seeds
(:mod:`.noise`), the regressors (:mod:`.regress`), the choice (:mod:`.choose`), the
verification (:mod:`.verify`), the files written (:mod:`.outputs`), the figures
(:mod:`.figures`) and the run (:mod:`.run`).
"""

from .config import SearchConfig
from .space import DEFAULT_SPACE, Space, parse_space

__all__ = ["SearchConfig", "Space", "parse_space", "DEFAULT_SPACE"]
