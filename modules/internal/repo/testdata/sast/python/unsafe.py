import ast
import marshal
import pickle

import yaml


def load_session(blob):
    return pickle.loads(blob)  # ward:expect unsafe-deserialization


def load_cache(path):
    with open(path, "rb") as f:
        return pickle.load(f)  # ward:expect unsafe-deserialization


def load_config(path):
    with open(path) as f:
        return yaml.load(f)  # ward:expect unsafe-deserialization


def load_config_full(stream):
    return yaml.load(  # ward:expect unsafe-deserialization
        stream,
        Loader=yaml.FullLoader,
    )


def load_config_safe(path):
    with open(path) as f:
        return yaml.load(f, Loader=yaml.SafeLoader)


def load_config_safest(path):
    with open(path) as f:
        return yaml.safe_load(f)


def load_code(blob):
    return marshal.loads(blob)  # ward:expect unsafe-deserialization


def calculate(expression):
    return eval(expression)  # ward:expect code-injection


def run_plugin(source):
    exec(compile(source, "<plugin>", "exec"))  # ward:expect code-injection


def parse_literal(text):
    return ast.literal_eval(text)


def evaluate(model, batch):
    model.eval()
    return model(batch)


def constant():
    return eval("2 ** 10")


def dump(obj):
    return pickle.dumps(obj)
