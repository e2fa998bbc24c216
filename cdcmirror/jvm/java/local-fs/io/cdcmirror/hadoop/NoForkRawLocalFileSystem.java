package io.cdcmirror.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per file. Without Hadoop's native library,
 * RawLocalFileSystem runs {@code chmod} in a new process for every file and directory it
 * creates, and {@code readlink} for every rename through FileContext (Spark's streaming
 * checkpoint): about 5-10 ms each on a small host, several per Iceberg commit. Here the same
 * permission is set with one system call, and a path that is not a symbolic link is looked
 * up directly; a symbolic link, and a file system without POSIX permissions, are left to
 * Hadoop.
 */
public class NoForkRawLocalFileSystem extends RawLocalFileSystem {
  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    grant(set, permission.getUserAction(), PosixFilePermission.OWNER_READ,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    grant(set, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    grant(set, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
        PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    try {
      Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
    } catch (UnsupportedOperationException e) {
      super.setPermission(p, permission); // a file system without POSIX permissions
    }
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (Files.isSymbolicLink(pathToFile(f).toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f); // what Hadoop returns for a path that is no link
  }

  private static void grant(Set<PosixFilePermission> set, FsAction action,
      PosixFilePermission read, PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      set.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      set.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      set.add(execute);
    }
  }
}
