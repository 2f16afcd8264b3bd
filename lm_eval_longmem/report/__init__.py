"""Plots and tables from lm-eval results files."""
