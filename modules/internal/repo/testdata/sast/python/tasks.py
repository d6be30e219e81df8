import os
import shlex
import subprocess


def backup(db_name):
    subprocess.run(["pg_dump", "--dbname", db_name, "--file", "/backup/db.sql"], check=True)


def quoted(path):
    return subprocess.run("ls -l " + shlex.quote(path), shell=True, check=True)


def env():
    token = os.environ.get("API_TOKEN", "")
    secret = os.getenv("APP_SECRET")
    return token, secret
