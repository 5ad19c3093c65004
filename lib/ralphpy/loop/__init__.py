"""Owns the wiring between ralph.py's plan and build loops and the library: one run's context,
its start-up steps, launching and recording one session, and the features that plug into the
loops through one interface (loop.features.Feature)."""
