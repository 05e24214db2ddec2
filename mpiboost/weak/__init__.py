"""Weak learners."""
