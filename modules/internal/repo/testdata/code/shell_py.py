import os
import popen2
import subprocess
import sys


def run(host):
    os.system("ping -c 1 " + host)  # ward:expect shell-injection
    os.popen("nslookup %s" % host)  # ward:expect shell-injection
    os.popen2("dig " + host)  # ward:expect shell-injection
    os.popen3("whois %s" % host)  # ward:expect shell-injection
    popen2.popen4("traceroute " + host)  # ward:expect shell-injection
    subprocess.call("tar xf " + host, shell=True)  # ward:expect shell-injection
    subprocess.check_output(f"curl {host}", shell=True)  # ward:expect shell-injection
    os.popen2(sys.argv[1])  # ward:expect shell-injection


def run_ok(host):
    os.system("uptime")  # ward:ok
    os.popen2("ls -l")  # ward:ok
    subprocess.call(["ping", "-c", "1", host])  # ward:ok
    subprocess.run("ls -l", shell=True)  # ward:ok
    cmd = "df -h"
    os.system(cmd)  # ward:ok
