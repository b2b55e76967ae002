"""Our SO-101-like arm in MuJoCo: the scene, the plain simulation, kinematics, tasks and the gymnasium env."""
