def greet(name):
    return "hello " + name


def shout(name):
    return greet(name).upper()
