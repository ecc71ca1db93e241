"""The fleet on PostgreSQL (SPEC section 13): :mod:`~loopkit.fleet.pg` (the hub),
:mod:`~loopkit.fleet.follow` (the owner's side), :mod:`~loopkit.fleet.schema` (the tables),
:mod:`~loopkit.fleet.route` (an answer finds its request anywhere). What every part of
loopkit talks to, fleet or not, is :mod:`loopkit.requests.hub`."""
