/*
 * cdcmirror's launcher of Apache Iceberg's REST catalog server for the stack's cluster
 * profile. Iceberg's own RESTCatalogServer makes its Jetty server with a port alone, which
 * binds every interface of the host; this one binds the host named by the system property
 * cdcmirror.rest.host (127.0.0.1 by default). The catalog behind it is made the same way,
 * from the CATALOG_* environment variables (RCKUtils), and its properties are not logged
 * (they hold the S3 store's secret key). In Iceberg's package: the adapter it serves
 * through (RESTServerCatalogAdapter) is package-private.
 */
package org.apache.iceberg.rest;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class LoopbackRESTCatalogServer {
  private LoopbackRESTCatalogServer() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> config = new HashMap<>(RCKUtils.environmentCatalogConfig());
    config.putIfAbsent("catalog-impl", JdbcCatalog.class.getName());
    config.putIfAbsent("jdbc.schema-version", "V1");
    for (String required : new String[] {"uri", "warehouse"}) {
      if (!config.containsKey(required)) {
        throw new IllegalArgumentException("catalog property " + required + " is not set");
      }
    }
    String name = config.getOrDefault("catalog.name", "rest_backend");
    Catalog catalog = CatalogUtil.buildIcebergCatalog(name, config, new Configuration());
    RESTCatalogAdapter adapter =
        new RESTServerCatalogAdapter(new RESTCatalogServer.CatalogContext(catalog, config));

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(System.getProperty("cdcmirror.rest.host", "127.0.0.1"));
    connector.setPort(Integer.parseInt(config.getOrDefault("rest.port", "8181")));
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    System.out.println(
        "cdcmirror: REST catalog " + name + " listening on "
            + connector.getHost() + ":" + connector.getLocalPort());
    server.join();
  }
}
