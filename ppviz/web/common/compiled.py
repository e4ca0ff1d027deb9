"""Imported for its effect: loads the compiled event pass (``ppviz.eventpass``) now, from numba's
cache or by compiling it there, so that no request or background job pays numba's import and load
(~0.4 s of CPU) or its compile (~1 s with an empty cache). app.py imports it before the first
request (once in gunicorn's master, whose workers inherit it), and the job server preloads it
(``job_runner.context``), so every job forked from that server has it too.
"""

from ppviz import eventpass

eventpass.warm()
