"""The one learner loop every verb that learns shares (train, finetune, offline -> online, remote actors).

``learner`` (the loop and its state), ``sources`` (where experience comes from: an env, a robot),
``scoring`` (the link that scores finished episodes and feeds the sampler), ``assembly`` (the one function
that builds a learner) and ``checkpoint`` (the one format and loader). Imports only the floor
(``vlmrl.errors``) and the domain packages; every other room builds on it.
"""
