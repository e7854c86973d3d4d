"""datamask: select pre-training data that is both high-quality and diverse."""
__version__ = "0.1.0"
