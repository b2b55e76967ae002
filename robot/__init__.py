"""Env/Robot contracts shared by sim and hardware, the LeRobot adapter, the safety layer, the control loop."""
