package com.example.billing;

import org.springframework.context.annotation.Bean;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

public class SecurityConfig {
    private static final String PASSWORD_PARAM = "password";
    private static final String TOKEN_PREFIX = "Bearer ";

    @Bean
    public PasswordEncoder passwordEncoder() {
        return new BCryptPasswordEncoder(12);
    }

    public String header(String token) {
        return TOKEN_PREFIX + token;
    }
}
