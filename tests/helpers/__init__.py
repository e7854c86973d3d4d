"""Code the tests share: data makers, CLI assertions, a numpy stand-in for cupy."""
