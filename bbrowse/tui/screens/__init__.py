"""Screens: compose widgets and route messages."""
