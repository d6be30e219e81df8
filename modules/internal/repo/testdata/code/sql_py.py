import asyncpg
import sqlite3
from flask import request

TABLE = "users"


async def by_name(conn, name):
    rows = await conn.fetch("SELECT * FROM users WHERE name = '" + name + "'")  # ward:expect sql-injection
    row = await conn.fetchrow(f"SELECT * FROM users WHERE id = {name}")  # ward:expect sql-injection
    val = await conn.fetchval("SELECT count(*) FROM users WHERE team = '%s'" % name)  # ward:expect sql-injection
    async with conn.transaction():
        async for r in conn.cursor("SELECT * FROM logs WHERE who = '{}'".format(name)):  # ward:expect sql-injection
            print(r)
    return rows, row, val


async def by_name_ok(conn, name):
    rows = await conn.fetch("SELECT * FROM users WHERE name = $1", name)  # ward:ok
    cur = await conn.cursor("SELECT * FROM logs WHERE who = $1", name)  # ward:ok
    return rows, cur


def search(db):
    term = request.args.get("q")
    query = "SELECT * FROM items WHERE title LIKE '%" + term + "%'"
    db.execute(query)  # ward:expect sql-injection
    sql = "DELETE FROM items WHERE id = %s" % request.form["id"]
    db.cursor().execute(sql)  # ward:expect sql-injection


def constant_parts(db):
    db.execute("SELECT * FROM " + TABLE + " WHERE id = ?", (1,))  # ward:ok
    limit = 10
    db.execute("SELECT * FROM items ORDER BY id LIMIT " + str(limit))  # ward:ok
    order = "created"
    db.execute("SELECT * FROM items ORDER BY " + order)  # ward:ok
    db.execute("SELECT * FROM items WHERE id = %s", (3,))  # ward:ok


def builtin_sqlite(path, user_id):
    con = sqlite3.connect(path)
    con.execute("UPDATE users SET seen = 1 WHERE id = " + user_id)  # ward:expect sql-injection
    con.executescript("DROP TABLE %s" % user_id)  # ward:expect sql-injection
