# ppviz web page, as a Docker demo space runs it: one container, port 7860, uid 1000.
# nginx on 7860 reads each request whole, then hands it to gunicorn on a private unix socket;
# deploy/serve.py starts both, passes SIGTERM on, and exits when either exits.
#
# python:3.11-slim (Python 3.11.15 on Debian trixie) pinned by the digest of the image index
# published for that tag in docker-library/repo-info, repos/python/remote/3.11-slim.md
# (commit 2477d553d2fdfa57b4ec11f63c8376eca8b7a253, built 5 Aug 2026).
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

# Who a client is, for the per-client job cap: the demo space's proxy, then nginx, each append to
# X-Forwarded-For, so the client is the second address from the end. Exposed directly (docker run -p),
# set PPVIZ_PROXY_HOPS=1: nginx's own entry, which a client cannot forge.
ENV PPVIZ_PROXY_HOPS=2

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Debian's nginx, at the version of the pinned base's release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx \
    && rm -rf /var/lib/apt/lists/*

RUN useradd -m -u 1000 user
USER 1000
ENV HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH
WORKDIR $HOME/app

COPY --chown=user requirements.txt ./
RUN pip install --user -r requirements.txt

COPY --chown=user app.py gunicorn.conf.py ./
COPY --chown=user deploy ./deploy
COPY --chown=user ppviz ./ppviz
COPY --chown=user assets ./assets

# The compiled event pass (ppviz.eventpass), compiled once here into numba's cache, which uid 1000
# owns: the server loads it at its start (app.py) instead of compiling it (~1 s). On a machine
# whose CPU differs from the builder's numba compiles it again at that start, into the same cache.
ENV NUMBA_CACHE_DIR=/home/user/.cache/numba
RUN python -c "from ppviz import eventpass; assert eventpass.warm(), 'the compiled event pass did not load'"

EXPOSE 7860
# Through nginx to a gunicorn worker: the page's layout, a cheap request.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/_dash-layout' % os.environ.get('PORT', '7860'), timeout=4)"]
CMD ["python", "deploy/serve.py"]
