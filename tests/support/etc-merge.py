#!/usr/bin/env python3
"""ostree's three-way merge of /etc, for a new deployment (tests/support/boot-root.sh
deploy): `etc-merge.py OLD_DEFAULTS OLD_ETC NEW_ETC`.

As ostree's `merge_configuration_from` (src/libostree/ostree-sysroot-deploy.c) does:
what the old deployment's /etc changed against its own defaults (its /usr/etc) is
carried onto the new deployment's /etc, which starts as the new tree's defaults:
- a path added or modified (another type, contents, mode, owner or link target) is
  copied over, replacing what the new defaults have there (a directory with its tree);
- a path removed from the defaults is removed from the new /etc.
"""
import os
import shutil
import stat
import sys


def same(a: str, b: str) -> bool:
    """Whether two paths are the same entry: type, mode, owner, contents or target."""
    sa, sb = os.lstat(a), os.lstat(b)
    if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
        return False
    if (sa.st_mode, sa.st_uid, sa.st_gid) != (sb.st_mode, sb.st_uid, sb.st_gid):
        return False
    if stat.S_ISLNK(sa.st_mode):
        return os.readlink(a) == os.readlink(b)
    if stat.S_ISREG(sa.st_mode):
        if sa.st_size != sb.st_size:
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    return True


def remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def copy(src: str, dst: str) -> None:
    """Copies one entry (a directory without its contents), keeping mode and owner; its
    parent is made when the new defaults lack it (one the old tree had unchanged)."""
    st = os.lstat(src)
    parent = os.path.dirname(dst)
    if not os.path.isdir(parent):
        copy(os.path.dirname(src), parent)
    if stat.S_ISDIR(st.st_mode):
        if os.path.lexists(dst) and not (os.path.isdir(dst) and not os.path.islink(dst)):
            remove(dst)
        os.makedirs(dst, exist_ok=True)
        os.chmod(dst, stat.S_IMODE(st.st_mode))
    else:
        remove(dst)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst, follow_symlinks=False)
    os.lchown(dst, st.st_uid, st.st_gid)


def merge(defaults: str, old: str, new: str) -> None:
    # Removed: in the old defaults, gone from the old /etc.
    for top, dirs, files in os.walk(defaults):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(top, name), defaults)
            if not os.path.lexists(os.path.join(old, rel)):
                remove(os.path.join(new, rel))
    # Added or modified: the old /etc's entries that differ from its defaults, parents
    # first (os.walk is top-down).
    for top, dirs, files in os.walk(old):
        for name in dirs + files:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, old)
            base = os.path.join(defaults, rel)
            if not os.path.lexists(base) or not same(path, base):
                copy(path, os.path.join(new, rel))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: etc-merge.py OLD_DEFAULTS OLD_ETC NEW_ETC")
    merge(*sys.argv[1:])
