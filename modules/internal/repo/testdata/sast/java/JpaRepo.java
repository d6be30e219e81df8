package com.example.billing;

import javax.persistence.EntityManager;
import org.apache.commons.codec.digest.DigestUtils;
import org.springframework.beans.factory.annotation.Value;

public class JpaRepo {
    @Value("${db.password}")
    private String password;

    private final EntityManager em;

    public JpaRepo(EntityManager em) {
        this.em = em;
    }

    public Object byName(String name) {
        return em.createQuery("SELECT u FROM User u WHERE u.name = '" + name + "'").getResultList(); // ward:expect sql-injection
    }

    public Object byNameSafe(String name) {
        return em.createQuery("SELECT u FROM User u WHERE u.name = :name").setParameter("name", name).getResultList();
    }

    public String legacyHash(String password) {
        return DigestUtils.sha1Hex(password); // ward:expect weak-hash
    }

    public String fileHash(byte[] fileBytes) {
        return DigestUtils.md5Hex(fileBytes);
    }
}
