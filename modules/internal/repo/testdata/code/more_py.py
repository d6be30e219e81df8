import os
import subprocess
import hashlib
import requests
from django.db import connection
from sqlalchemy import text


def lookup(session, engine, name):
    session.execute(text("SELECT * FROM users WHERE name = '" + name + "'"))  # ward:expect sql-injection
    engine.execute(f"DELETE FROM sessions WHERE user = '{name}'")  # ward:expect sql-injection
    with connection.cursor() as cursor:
        cursor.execute("UPDATE t SET a = %s WHERE b = '%s'" % (1, name))  # ward:expect sql-injection


def lookup_ok(session, name):
    table = get_table_name()
    session.execute(text("SELECT * FROM " + table))  # ward:ok
    session.execute(text("SELECT * FROM users WHERE name = :name"), {"name": name})  # ward:ok
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM t WHERE b = %s", [name])  # ward:ok


def names(db, user):
    who = user.name
    db.execute("SELECT * FROM t WHERE owner = '" + who + "'")  # ward:expect sql-injection
    n = count_rows(user)
    db.execute("SELECT * FROM t LIMIT " + n)  # ward:expect sql-injection


def run(cmd, args):
    subprocess.Popen(cmd, shell=True)  # ward:expect shell-injection
    os.system(cmd)  # ward:expect shell-injection
    subprocess.Popen(["/bin/ls", args])  # ward:ok
    exec(compile(cmd, "<string>", "exec"))  # ward:expect code-injection


def fetch(url):
    requests.get(url, verify=False)  # ward:expect tls-verify-disabled
    requests.get(url, verify=True)  # ward:ok
    requests.get(url, timeout=5)  # ward:ok


def check(password, salt):
    return hashlib.sha1(salt + password).hexdigest()  # ward:expect weak-hash


def checksum(path):
    return hashlib.sha1(open(path, "rb").read()).hexdigest()  # ward:ok
