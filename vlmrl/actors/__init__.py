"""Experience from other processes: an env actor and a robot actor (plain Python, ``env_actor``,
``robot_actor``) and the learner's source that runs them as Ray actors (``ray_source``, imports Ray only when
used). Above ``evaluation``.
"""
