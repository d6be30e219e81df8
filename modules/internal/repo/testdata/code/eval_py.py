import asyncio
from flask import request

EXPR = "1 + 2"


def handler():
    code = request.args.get("code")
    eval(code)  # ward:expect code-injection
    exec("result = " + code)  # ward:expect code-injection


async def run_code(src):
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, exec, src)  # ward:expect code-injection
    await loop.run_in_executor(None, eval, src)  # ward:expect code-injection
    list(map(eval, src.split(";")))  # ward:expect code-injection


def constant():
    eval("1 + 2")  # ward:ok
    eval(EXPR)  # ward:ok
    exec("import this")  # ward:ok
    x = "print('hi')"
    exec(x)  # ward:ok
    asyncio.get_event_loop().run_in_executor(None, print, "x")  # ward:ok
