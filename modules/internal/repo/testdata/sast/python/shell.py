import os
import subprocess


def ping(host):
    os.system("ping -c 1 " + host)  # ward:expect shell-injection


def archive(src, dest):
    subprocess.run(  # ward:expect shell-injection
        f"tar czf {dest} {src}",
        shell=True,
        check=True,
    )


def disk_usage(path):
    return subprocess.check_output("du -sh %s" % path, shell=True)  # ward:expect shell-injection


def list_dir(path):
    return subprocess.run(["ls", "-l", path], check=True, capture_output=True)


def uptime():
    return subprocess.check_output("uptime", shell=True)


def version():
    cmd = "git describe --tags"
    return os.popen(cmd).read()


def run_user_command(command):
    return subprocess.call(command, shell=True)  # ward:expect shell-injection
