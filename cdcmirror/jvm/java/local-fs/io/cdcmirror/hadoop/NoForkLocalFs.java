package io.cdcmirror.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;

/**
 * FileContext's checksummed local file system ({@code fs.AbstractFileSystem.file.impl}), as
 * Hadoop's LocalFs, on NoForkRawLocalFs.
 */
public class NoForkLocalFs extends ChecksumFs {
  public NoForkLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new NoForkRawLocalFs(uri, conf));
  }
}
