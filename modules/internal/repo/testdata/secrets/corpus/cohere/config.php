<?php
$config['cohere_api_token'] = "lsxQ@@0vZFXjMbJOFhBLnZRQPhQztiCCHAyD77roPR";
