package com.example.billing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class UserDao {
    private final Connection conn;

    public UserDao(Connection conn) {
        this.conn = conn;
    }

    public ResultSet byName(String name) throws SQLException {
        Statement stmt = conn.createStatement();
        return stmt.executeQuery("SELECT * FROM users WHERE name = '" + name + "'"); // ward:expect sql-injection
    }

    public ResultSet byStatus(String status, int limit) throws SQLException {
        Statement stmt = conn.createStatement();
        return stmt.executeQuery(String.format( // ward:expect sql-injection
                "SELECT * FROM orders WHERE status = '%s' LIMIT %d",
                status, limit));
    }

    public int deleteOlderThan(String days) throws SQLException {
        String sql = "DELETE FROM events WHERE created_at < now() - interval '"
                + days + " days'";
        return conn.createStatement().executeUpdate(sql); // ward:expect sql-injection
    }

    public ResultSet byId(long id) throws SQLException {
        PreparedStatement ps = conn.prepareStatement("SELECT * FROM users WHERE id = ?");
        ps.setLong(1, id);
        return ps.executeQuery();
    }

    public ResultSet all() throws SQLException {
        return conn.createStatement().executeQuery("SELECT * FROM users " + "ORDER BY id");
    }
}
