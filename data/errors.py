"""Exceptions of the data package; each message names the file or key at fault and the fix."""

__all__ = ["DataFormatError", "DataNotFoundError", "CheckpointError"]


class DataFormatError(ValueError):
    """A data file exists but is malformed: bad magic number, truncated, inconsistent sizes."""


class DataNotFoundError(FileNotFoundError):
    """No source could provide the data set; the message says how to provide it."""


class CheckpointError(ValueError):
    """A checkpoint file is unreadable or does not match the tree it is restored into."""
