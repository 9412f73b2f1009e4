"""Backends: the agent stacks a run can drive, behind one small interface."""
