# ppviz web page on gunicorn, as a Docker demo space expects it: uid 1000, port 7860.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd -m -u 1000 user
USER user
ENV HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH
WORKDIR $HOME/app

COPY --chown=user requirements.txt ./
RUN pip install --user -r requirements.txt

COPY --chown=user app.py gunicorn.conf.py ./
COPY --chown=user ppviz ./ppviz
COPY --chown=user assets ./assets

EXPOSE 7860
CMD ["gunicorn", "app:server", "-b", "0.0.0.0:7860", "-c", "gunicorn.conf.py"]
