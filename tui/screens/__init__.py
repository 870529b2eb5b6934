"""Screens, each with its own stylesheet next to it."""
