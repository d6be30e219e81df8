<?php
function check_login($db, $user, $password) {
    $hash = md5($password); // ward:expect weak-hash
    $row = $db->query("SELECT * FROM users WHERE name = '" . $user . "'"); // ward:expect sql-injection
    return $row && $row['hash'] === $hash;
}

function run_template($code) {
    eval($code); // ward:expect code-injection
}

$prefs = unserialize($_COOKIE['prefs']); // ward:expect unsafe-deserialization
$etag = md5($body);
$stmt = $db->prepare("SELECT * FROM users WHERE id = ?");
