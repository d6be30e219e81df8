package com.example.billing

import java.security.MessageDigest

class Auth(private val repo: UserRepository) {
    private val apiToken = "0FfkjKcssytZZ6pgfRfnwOo0" // ward:expect hardcoded-secret
    private val passwordLabel = "Password"

    fun hashPassword(password: String): String {
        val md = MessageDigest.getInstance("SHA-1") // ward:expect weak-hash
        return md.digest(password.toByteArray()).joinToString("") { "%02x".format(it) }
    }

    fun find(id: String) = jdbcTemplate.queryForList("SELECT * FROM users WHERE id = $id") // ward:expect sql-injection

    fun findSafe(id: String) = jdbcTemplate.queryForList("SELECT * FROM users WHERE id = ?", id)
}
