<?php
$config['cohere_api_token'] = "6hj5@@buotaPU5WgX4uowoTbZ6vBCDY444aa5w7XFf";
