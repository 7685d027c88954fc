"""Recipes: the paper experiments as make targets over nmtkit commands."""
