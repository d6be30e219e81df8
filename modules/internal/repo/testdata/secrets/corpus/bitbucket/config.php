<?php
$config['bitbucket_client_id'] = "nm3k@@anzpwwqepazg53ktxb1aazeiuem8";
