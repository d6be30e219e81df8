<?php
$config['gcp_api_key'] = "AIza@@Y9f63GKa-5hhYq1jOKAHJuvm4rj3rHnXbIF";
