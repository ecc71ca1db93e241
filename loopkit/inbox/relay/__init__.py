"""The Telegram relay: answers from the phone, used by ``loopkit run`` and ``loopkit serve``.

- :mod:`~loopkit.inbox.relay.poller`: long-polls ``getUpdates`` under the bot's lease, decides
  who may answer, and records each tap or reply once, in the workspace that holds its request.
- :mod:`~loopkit.inbox.relay.senders`: who sent an update, and what a message is edited to say
  once its request is answered.
"""
