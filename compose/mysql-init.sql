-- Runs once inside the mysql container. MySQL 8 has no PASSWORD(); the grants are those
-- of sql/mysql/replication_user.sql, for the user connecting from the Connect container.
CREATE USER IF NOT EXISTS 'cdc'@'%' IDENTIFIED BY 'cdc_dev_secret';
GRANT RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%';
GRANT SELECT ON `shop`.* TO 'cdc'@'%';
CREATE USER IF NOT EXISTS 'cdcmirror_admin'@'%' IDENTIFIED BY 'cdcmirror_admin';
GRANT ALL PRIVILEGES ON *.* TO 'cdcmirror_admin'@'%' WITH GRANT OPTION;
