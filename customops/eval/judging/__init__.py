"""Judging the sides: metrics, attribution against the yardstick, known deviations."""
