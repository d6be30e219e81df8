import subprocess
from hashlib import md5

SQL_TOTALS = "SELECT day, sum(amount) FROM payments WHERE day >= %s GROUP BY day"


def totals(cursor, since):
    cursor.execute(SQL_TOTALS, (since,))
    return cursor.fetchall()


def by_email(cursor, email):
    cursor.execute(f"""  # ward:expect sql-injection
        SELECT id, name FROM users
        WHERE email = '{email}'
    """)
    return cursor.fetchone()


def log_timing(log, ms):
    log.info(f"SELECT took {ms} ms")


def thumbnail(src, dst):
    cmd = f"convert {src} -resize 200x200 {dst}"
    subprocess.Popen(cmd, shell=True).wait()  # ward:expect shell-injection


def run_list(args):
    return subprocess.run(args, shell=False, check=True)


def legacy(pwd):
    return md5(pwd.encode()).hexdigest()  # ward:expect weak-hash


def connect(host, password: str = None):
    import getpass
    password = password or getpass.getpass()
    return host, password


def load(f):
    import pickle
    return pickle.Unpickler(f).load()  # ward:expect unsafe-deserialization
