package io.cdcmirror.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** Hadoop's checksummed local file system ({@code fs.file.impl}) on NoForkRawLocalFileSystem. */
public class NoForkLocalFileSystem extends LocalFileSystem {
  public NoForkLocalFileSystem() {
    super(new NoForkRawLocalFileSystem());
  }
}
