<?php
$config['bitbucket_client_id'] = "yjq4@@i7fjbef60pkmwzav9zdxdfgcde6n";
