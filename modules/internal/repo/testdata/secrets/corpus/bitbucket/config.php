<?php
$config['bitbucket_client_id'] = "kzdo@@z84q4nh3fzfca5htapkj4135o8q3";
