-- Least-privilege user for the Debezium MySQL / MariaDB connector.
-- Run as an administrator, with the password and database in session variables:
--   { echo "SET @cdc_password='...', @cdc_database='shop';"; cat replication_user.sql; } | mariadb
--
-- Global privileges (MySQL allows them only ON *.*):
--   RELOAD             FLUSH TABLES for the consistent initial snapshot
--   SHOW DATABASES     find the captured databases during the snapshot
--   REPLICATION SLAVE  read the binlog
--   REPLICATION CLIENT SHOW MASTER STATUS / SHOW BINARY LOGS (MariaDB: BINLOG MONITOR)
-- SELECT is granted only on the mirrored database.

CREATE USER IF NOT EXISTS 'cdc'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'cdc'@'localhost';
GRANT RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'127.0.0.1';
GRANT RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'localhost';

-- The password and database name come from session variables, quoted through QUOTE() and
-- identifier escaping in prepared statements.
SET @stmt = CONCAT('ALTER USER ''cdc''@''127.0.0.1'' IDENTIFIED BY ', QUOTE(@cdc_password));
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
SET @stmt = CONCAT('ALTER USER ''cdc''@''localhost'' IDENTIFIED BY ', QUOTE(@cdc_password));
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
SET @stmt = CONCAT('GRANT SELECT ON `', REPLACE(@cdc_database, '`', '``'),
                   '`.* TO ''cdc''@''127.0.0.1''');
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
SET @stmt = CONCAT('GRANT SELECT ON `', REPLACE(@cdc_database, '`', '``'),
                   '`.* TO ''cdc''@''localhost''');
PREPARE stmt FROM @stmt; EXECUTE stmt; DEALLOCATE PREPARE stmt;
