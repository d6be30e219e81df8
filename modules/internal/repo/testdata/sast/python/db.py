import sqlite3

from django.db import connection
from sqlalchemy import text


def find_user(cursor, name):
    cursor.execute(f"SELECT id, email FROM users WHERE name = '{name}'")  # ward:expect sql-injection
    return cursor.fetchone()


def find_orders(cursor, status):
    cursor.execute("SELECT id FROM orders WHERE status = '%s'" % status)  # ward:expect sql-injection
    return cursor.fetchall()


def delete_user(cursor, user_id):
    cursor.execute(  # ward:expect sql-injection
        "DELETE FROM users "
        "WHERE id = {}".format(user_id)
    )


def search(cursor, term):
    query = "SELECT id FROM products WHERE name LIKE '%" + term + "%'"
    cursor.execute(query)  # ward:expect sql-injection


def by_id(cursor, user_id):
    cursor.execute("SELECT id, email FROM users WHERE id = %s", (user_id,))
    return cursor.fetchone()


def by_email(cursor, email):
    cursor.execute(
        "SELECT id FROM users WHERE email = %(email)s",
        {"email": email},
    )


def lite(db: sqlite3.Connection, uid):
    return db.execute("SELECT * FROM users WHERE id = ?", (uid,)).fetchone()


def raw_people(Person, last_name):
    return Person.objects.raw("SELECT * FROM people WHERE last_name = %s", [last_name])


def raw_people_unsafe(Person, last_name):
    return Person.objects.raw(f"SELECT * FROM people WHERE last_name = '{last_name}'")  # ward:expect sql-injection


def report(session, day):
    return session.execute(text("SELECT count(*) FROM orders WHERE day = :day"), {"day": day})


def report_unsafe(session, table):
    return session.execute(text(f"SELECT count(*) FROM {table}"))  # ward:expect sql-injection


def count():
    with connection.cursor() as cursor:
        sql = "SELECT count(*) FROM users"
        cursor.execute(sql)
        return cursor.fetchone()
