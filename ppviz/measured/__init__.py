"""Measured pipeline runs read from the files real tools write (issue #21)."""
