"""Pure solvers: numpy arrays and plain dataclasses in, results out. Nothing here imports `service`."""
