import pickle
import shelve
import marshal
import dill
import joblib
import jsonpickle
import yaml
import numpy as np
import torch
import _pickle as cpk
from pickle import loads as pl
from flask import request


def load(data, path):
    pickle.loads(data)  # ward:expect unsafe-deserialization
    pickle.load(open(path, "rb"))  # ward:expect unsafe-deserialization
    pickle.Unpickler(open(path, "rb")).load()  # ward:expect unsafe-deserialization
    cpk.loads(data)  # ward:expect unsafe-deserialization
    pl(request.data)  # ward:expect unsafe-deserialization
    marshal.loads(data)  # ward:expect unsafe-deserialization
    dill.loads(data)  # ward:expect unsafe-deserialization
    joblib.load(path)  # ward:expect unsafe-deserialization
    jsonpickle.decode(data)  # ward:expect unsafe-deserialization
    shelve.open(path)  # ward:expect unsafe-deserialization
    np.load(path, allow_pickle=True)  # ward:expect unsafe-deserialization
    torch.load(path)  # ward:expect unsafe-deserialization
    yaml.load(data)  # ward:expect unsafe-deserialization
    yaml.load(data, Loader=yaml.Loader)  # ward:expect unsafe-deserialization
    yaml.load(data, Loader=yaml.UnsafeLoader)  # ward:expect unsafe-deserialization
    yaml.unsafe_load(data)  # ward:expect unsafe-deserialization
    yaml.load_all(data, Loader=yaml.FullLoader)  # ward:expect unsafe-deserialization


def load_ok(data, path):
    yaml.load("config.yaml")  # ward:ok
    yaml.safe_load(data)  # ward:ok
    yaml.load(data, Loader=yaml.SafeLoader)  # ward:ok
    np.load(path)  # ward:ok
    np.load(path, allow_pickle=False)  # ward:ok
    torch.load(path, weights_only=True)  # ward:ok
    pickle.dumps(data)  # ward:ok
    pickle.loads(b"\x80\x04K\x01.")  # ward:ok
